"""memlife: long-horizon lifecycle tester for multi-tenant conversational memory."""

__version__ = "0.1.0"
