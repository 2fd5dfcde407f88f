from memlife.cli import entry

entry()
