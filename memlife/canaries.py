"""Canary values: natural-looking fact values generated per run from a seed. Pure.

Each value combines several independent draws (an employer is a trade and two surnames; an
address a street name and a number), so the space per kind runs from ~10^5 to ~10^6 and a
value is practically unique to its run: a needle search for it is unambiguous, and finding
it under another tenant cannot be a coincidence. Within one run every value is distinct and
no value contains another (after normalization), so substring scoring stays exact.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from memlife.scoring import normalize

SURNAMES = (
    "Arriaga Quispe Olmedo Valdivia Ocampo Zubiaurre Etxeberria Larrañaga Sandoval Montoya "
    "Benavides Cifuentes Echeverría Galindo Iturralde Jaramillo Lozano Mondragón Navarrete "
    "Orozco Palacios Quintana Rentería Saavedra Tamayo Urquiza Villalobos Yáñez Zamora "
    "Arizmendi Barrenechea Carvajal Dorronsoro Escalante Figueroa Goicoechea Hinojosa Ibarra "
    "Jáuregui Landa Maldonado Nuñez Olaechea Pizarro Quiroga Robledo Sepúlveda Toledo Uriarte "
    "Valcárcel Alcántara Bustamante Cárdenas Durán Elizondo Fajardo Gallardo Huerta Izquierdo "
    "Lizarraga Medrano Noriega Ordóñez Peñalver Quevedo Ribera Solórzano Trujillo Ulloa Vergara "
    "Aguirre Barragán Cuadrado Solana Espejo Ferrando Garmendia Herrero Inclán Jiménez Lafuente "
    "Mariscal Olavarría Perales Rosales Salcedo Tejada Uribe Valverde Zaldívar Aranda Berrocal "
    "Chacón Domínguez Egaña Fuentes Guzmán Heredia Irujo Luján Manrique Ochandiano Pastrana"
).split()
GIVEN_NAMES = (
    "Inés Tomás Lucía Mateo Carmen Julián Olga Rodrigo Elena Ignacio Rocío Gonzalo Marta "
    "Esteban Pilar Andrés Nuria Fermín Alba Héctor Irene Lorenzo Sara Bruno Paula Álvaro Rosa "
    "Víctor Clara Emilio Teresa Joaquín Ana Ramiro Eva Adrián Noelia Sergio Amparo Hugo Celia "
    "Diego Leire Aitor Begoña Iker Maite Xabier Ainhoa Unai Itziar Martín Raquel Pablo Sonia "
    "Óscar Lidia Jaime Beatriz César Marina Félix Susana Iván Cristina Rubén Gloria Simón Diana"
).split()
TRADES = (
    "Panadería|Ferretería|Talleres|Imprenta|Carpintería|Librería|Farmacia|Óptica|Floristería|"
    "Transportes|Construcciones|Conservas|Bodegas|Laboratorios|Estudio|Asesoría|Clínica|"
    "Academia|Viveros|Cerámicas|Textiles|Muebles|Autoescuela|Pastelería|Lavandería"
).split("|")
STREET_KINDS = ("calle", "avenida", "paseo", "plaza", "travesía", "camino", "ronda")
PET_NAMES = (
    "Canelo Luna Toby Nala Rocky Kira Simba Lola Bimba Trufa Chispa Pancho Coco Nube Greta "
    "Tango Brisa Bolt Mora Pipo Duna Rufo Mimi Thor Sombra Pelusa Oreo Chocolate Bruma Lúa"
).split()
PET_KINDS = ("perro", "gata", "gato", "perra", "loro", "conejo", "tortuga", "hurón")
SAINTS = (
    "San Telmo|Santa Olalla|San Fermín|Santa Engracia|San Millán|Santa Casilda|San Roque|"
    "Santa Brígida|San Isidoro|Santa Quiteria|San Prudencio|Santa Eulalia|San Lesmes|"
    "Santa Leocadia|San Froilán|Santa Marina|San Vitores|Santa Librada|San Ginés|Santa Florentina"
).split("|")


def _employer(rng: random.Random) -> str:
    first, second = rng.sample(SURNAMES, 2)
    return f"{rng.choice(TRADES)} {first} {second}"


def _address(rng: random.Random) -> str:
    return f"{rng.choice(STREET_KINDS)} {rng.choice(SURNAMES)} {rng.randint(100, 9999)}"


def _person(rng: random.Random) -> str:
    first, second = rng.sample(SURNAMES, 2)
    return f"{rng.choice(GIVEN_NAMES)} {first} {second}"


def _pet(rng: random.Random) -> str:
    return f"{rng.choice(PET_NAMES)} {rng.choice(SURNAMES)} {rng.choice(SURNAMES)}"


def _school(rng: random.Random) -> str:
    return f"Colegio {rng.choice(SAINTS)} {rng.choice(SURNAMES)} {rng.randint(2, 99)}"


GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "employer": _employer,
    "address": _address,
    "person": _person,
    "pet": _pet,
    "school": _school,
}


class CanaryPool:
    """Draws run-unique values; no value equals or contains another (normalized)."""

    def __init__(self, seed: str, avoid: list[str] | None = None):
        self._rng = random.Random(f"memlife-canaries:{seed}")
        self._taken: list[str] = [normalize(text) for text in (avoid or []) if normalize(text)]

    def _clashes(self, candidate: str) -> bool:
        return any(candidate in taken or taken in candidate for taken in self._taken)

    def draw(self, kind: str) -> str:
        generator = GENERATORS[kind]
        for _ in range(10_000):
            value = generator(self._rng)
            normalized = normalize(value)
            if not self._clashes(normalized):
                self._taken.append(normalized)
                return value
        raise RuntimeError(f"canary space for {kind!r} exhausted")
