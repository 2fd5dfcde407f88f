import sys

from memlife.cli import main

sys.exit(main())
