"""memlife: long-horizon lifecycle tester for multi-tenant conversational memory."""

__version__ = "0.1.0"

# The task queue memlife's workflows go to and its workers poll unless told otherwise.
DEFAULT_TASK_QUEUE = "memlife"
