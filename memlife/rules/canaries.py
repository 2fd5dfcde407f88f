"""Canary values: natural-looking fact values generated per run from a seed, Spanish or
English as the generated tenants speak. Pure.

Each value combines several independent draws (an employer is a trade and two surnames; an
address a street name and a number), so the space per kind runs from ~10^5 to ~10^6 and a
value is practically unique to its run: a needle search for it is unambiguous, and finding
it under another tenant cannot be a coincidence. Within one run every value is distinct and
no value contains another (after normalization), so substring scoring stays exact.

A language is data: its word lists (LANGUAGES) and, per value kind, the order its parts are
drawn in and how the value reads (RECIPES); one generator (`generate`) serves them all. The
order of the draws fixes a seed's values (tests/rules/test_canaries_timeline.py pins some).
"""

from __future__ import annotations

import random
from array import array
from dataclasses import dataclass
from typing import NamedTuple

from memlife.rules.scoring import normalize

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
SAINTS = (
    "San Telmo|Santa Olalla|San Fermín|Santa Engracia|San Millán|Santa Casilda|San Roque|"
    "Santa Brígida|San Isidoro|Santa Quiteria|San Prudencio|Santa Eulalia|San Lesmes|"
    "Santa Leocadia|San Froilán|Santa Marina|San Vitores|Santa Librada|San Ginés|Santa Florentina"
).split("|")


# English-looking values, built the same way from uncommon English names and words.
SURNAMES_EN = (
    "Ashdown Blackwood Carrington Davenport Ellsworth Fairbanks Greenhalgh Hargreaves Ingleby "
    "Jessop Kingsley Lockhart Merriweather Northcott Oakley Pemberton Quayle Ravenscroft "
    "Sherwood Thistlewood Underhill Vandermeer Whitlock Yardley Abernathy Bellamy Cromwell "
    "Dunmore Everhart Fenwick Galloway Holloway Ironside Jarrow Kettering Langley Montague "
    "Nettleship Ormsby Pickering Quinlan Radcliffe Stanhope Tolliver Upton Vickery Wakefield "
    "Westbrook Ashcombe Brackenbury Chadwick Dunsmore Eastwood Fairweather Gladstone Hathaway "
    "Inchbald Kimberley Lovelace Marchbank Newbold Oldfield Penhaligon Quartermaine Rowntree "
    "Stainforth Thackeray Wetherby Aldridge Birkett Cheverton Dinsdale Elmhirst Fothergill "
    "Gosling Hebblethwaite Illingworth Kirkbride Lumley Moorcroft Nethercott Outhwaite"
).split()
GIVEN_NAMES_EN = (
    "Harriet Percival Imogen Rupert Cordelia Ambrose Winifred Barnaby Philippa Cuthbert "
    "Rosalind Ignatius Beatrix Genevieve Horatio Marigold Leopold Ottilie Reginald Clementine "
    "Bartholomew Araminta Montgomery Seraphina Thaddeus Lavinia Evander Millicent Cornelius "
    "Persephone Alistair Griselda Florian Henrietta Lysander Prudence Octavian Wilhelmina"
).split()
TRADES_EN = (
    "Bakery|Printers|Joinery|Ironworks|Pharmacy|Opticians|Florists|Haulage|Builders|Cannery|"
    "Vineyards|Laboratories|Consultancy|Clinic|Nurseries|Ceramics|Textiles|Furniture|Motors|"
    "Patisserie|Laundry|Tannery|Brewery|Cartographers|Upholstery"
).split("|")
STREET_KINDS_EN = ("Lane", "Road", "Avenue", "Court", "Crescent", "Terrace", "Mews", "Row")
PET_NAMES_EN = (
    "Biscuit Pickle Rusty Juniper Pippin Marmalade Waffles Bramble Clover Noodle Pudding "
    "Crumpet Sprocket Thimble Toffee Parsnip Dumpling Muffin Tinker Acorn Bumble Fudge"
).split()
SAINTS_EN = (
    "Saint Aldhelm|Saint Botolph|Saint Cuthbert|Saint Dunstan|Saint Edmund|Saint Frideswide|"
    "Saint Guthlac|Saint Hilda|Saint Kenelm|Saint Oswald|Saint Swithun|Saint Wilfrid|"
    "Saint Aidan|Saint Chad|Saint Bede|Saint Alban|Saint Werburgh|Saint Petroc|Saint Piran"
).split("|")


@dataclass(frozen=True)
class Words:
    """One language's word lists, each value kind draws from."""

    surnames: tuple[str, ...]
    given_names: tuple[str, ...]
    trades: tuple[str, ...]
    street_kinds: tuple[str, ...]
    pet_names: tuple[str, ...]
    saints: tuple[str, ...]


# The languages of generated tenants (`generate.language`, else the scenario's): Spanish
# unless English is asked for.
LANGUAGES: dict[str, Words] = {
    "es": Words(
        tuple(SURNAMES),
        tuple(GIVEN_NAMES),
        tuple(TRADES),
        STREET_KINDS,
        tuple(PET_NAMES),
        tuple(SAINTS),
    ),
    "en": Words(
        tuple(SURNAMES_EN),
        tuple(GIVEN_NAMES_EN),
        tuple(TRADES_EN),
        STREET_KINDS_EN,
        tuple(PET_NAMES_EN),
        tuple(SAINTS_EN),
    ),
}


class Draw(NamedTuple):
    """One part of a value: its name in the value's template, and how it is drawn: one
    word of a list, two different words of it, or a number from `low` to `high`."""

    name: str
    words: str = ""  # a field of Words
    two: bool = False
    low: int = 0
    high: int = 0


class Recipe(NamedTuple):
    """A value kind in one language: its parts in the order they are drawn (the order
    fixes a seed's values), and how the value reads."""

    draws: tuple[Draw, ...]
    template: str


_NAMES = Draw("names", "surnames", two=True)
_SURNAME = Draw("surname", "surnames")
# Per value kind, per language. Each combines several independent draws (module doc).
RECIPES: dict[str, dict[str, Recipe]] = {
    "employer": {
        "es": Recipe((_NAMES, Draw("trade", "trades")), "{trade} {names[0]} {names[1]}"),
        "en": Recipe((_NAMES, Draw("trade", "trades")), "{names[0]} {names[1]} {trade}"),
    },
    "address": {
        "es": Recipe(
            (Draw("kind", "street_kinds"), _SURNAME, Draw("number", low=100, high=9999)),
            "{kind} {surname} {number}",
        ),
        "en": Recipe(
            (Draw("number", low=100, high=9999), _SURNAME, Draw("kind", "street_kinds")),
            "{number} {surname} {kind}",
        ),
    },
    "person": dict.fromkeys(
        ("es", "en"),
        Recipe((_NAMES, Draw("given", "given_names")), "{given} {names[0]} {names[1]}"),
    ),
    "pet": dict.fromkeys(
        ("es", "en"),
        Recipe(
            (Draw("pet", "pet_names"), Draw("first", "surnames"), Draw("second", "surnames")),
            "{pet} {first} {second}",
        ),
    ),
    "school": {
        "es": Recipe(
            (Draw("saint", "saints"), _SURNAME, Draw("number", low=2, high=99)),
            "Colegio {saint} {surname} {number}",
        ),
        "en": Recipe(
            (Draw("saint", "saints"), _SURNAME, Draw("number", low=2, high=99)),
            "{saint} {surname} School {number}",
        ),
    },
}
KINDS = tuple(RECIPES)


# What a value listed in a scenario gets after it against a long-lived target, so that
# each run states its own (rules/pairs.py: vary_listed): a surname and a number, from the
# same word lists (about 10^5 markers per language).
MARKER = Recipe((_SURNAME, Draw("number", low=10, high=999)), "{surname} {number}")


def generate(kind: str, language: str, rng: random.Random) -> str:
    """One value of the kind, drawn from `rng` in the language (Spanish unless known)."""
    return compose(RECIPES[kind].get(language) or RECIPES[kind]["es"], language, rng)


def compose(recipe: Recipe, language: str, rng: random.Random) -> str:
    """The recipe's parts drawn from `rng`, in order, from the language's word lists."""
    words = LANGUAGES.get(language) or LANGUAGES["es"]
    parts: dict[str, object] = {}
    for draw in recipe.draws:
        if not draw.words:
            parts[draw.name] = rng.randint(draw.low, draw.high)
        elif draw.two:
            parts[draw.name] = rng.sample(getattr(words, draw.words), 2)
        else:
            parts[draw.name] = rng.choice(getattr(words, draw.words))
    return recipe.template.format(**parts)


class CanarySpaceExhausted(ValueError):
    """No fresh value of a kind could be drawn: every candidate clashes with a text to
    avoid (a question template, a value already drawn or claimed)."""

    def __init__(self, kind: str) -> None:
        super().__init__(
            f"no fresh {kind!r} canary value could be drawn: every candidate "
            "holds or lies inside a question template or a value already "
            "taken (is a question only a few characters long?)"
        )
        self.kind = kind


class CanaryPool:
    """Draws run-unique values; no value equals or contains another (normalized).

    The clash test is exact and does not grow with the values drawn so far (a run of
    10,000 pairs draws half a million): a value already taken that lies inside the
    candidate is one of the candidate's own substrings, looked up in a set; a value the
    candidate would lie inside holds every 5-character piece of it, so only the values
    holding its rarest piece are searched.
    """

    _GRAM = 5

    def __init__(self, seed: str, avoid: list[str] | None = None):
        self._rng = random.Random(f"memlife-canaries:{seed}")
        self._taken: list[str] = []
        self._taken_set: set[str] = set()
        self._lengths: set[int] = set()
        self._by_gram: dict[str, array[int]] = {}
        for text in avoid or []:
            normalized = normalize(text)
            if normalized and normalized not in self._taken_set:
                self._take(normalized)

    def _take(self, normalized: str) -> None:
        index = len(self._taken)
        self._taken.append(normalized)
        self._taken_set.add(normalized)
        self._lengths.add(len(normalized))
        size = self._GRAM
        for gram in {normalized[i : i + size] for i in range(len(normalized) - size + 1)}:
            holders = self._by_gram.get(gram)
            if holders is None:
                holders = self._by_gram[gram] = array("i")
            holders.append(index)

    def _clashes(self, candidate: str) -> bool:
        length = len(candidate)
        taken = self._taken_set
        for size in self._lengths:  # a taken value inside the candidate
            if size <= length and any(
                candidate[start : start + size] in taken for start in range(length - size + 1)
            ):
                return True
        if length < self._GRAM:  # too short to index: look everywhere
            return any(candidate in text for text in self._taken)
        rarest: array[int] | None = None
        for start in range(length - self._GRAM + 1):
            holders = self._by_gram.get(candidate[start : start + self._GRAM])
            if holders is None:
                return False  # no taken value holds this piece, so none holds the candidate
            if rarest is None or len(holders) < len(rarest):
                rarest = holders
        assert rarest is not None
        return any(candidate in self._taken[index] for index in rarest)

    def draw(self, kind: str, language: str = "es") -> str:
        for _ in range(10_000):
            value = generate(kind, language, self._rng)
            normalized = normalize(value)
            if not self._clashes(normalized):
                self._take(normalized)
                return value
        raise CanarySpaceExhausted(kind)

    def take(self, text: str) -> None:
        """Count `text` as taken, clashing or not (a rendering of a value already taken)."""
        normalized = normalize(text)
        if normalized and normalized not in self._taken_set:
            self._take(normalized)

    def mark(self, text: str, language: str = "es") -> str:
        """`text` (a value as a scenario lists it) with a marker drawn after it, clashing
        with nothing taken: the listed value made this run's own."""
        for _ in range(10_000):
            value = f"{text} {compose(MARKER, language, self._rng)}"
            normalized = normalize(value)
            if not self._clashes(normalized):
                self._take(normalized)
                return value
        raise CanarySpaceExhausted(f"marker of {text!r}")
