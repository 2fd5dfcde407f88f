"""The session's `memlife dev` stack (tests/e2e/devstack.py), for the tests that ask for it."""

from tests.e2e.devstack import dev_stack

__all__ = ["dev_stack"]
