import sys

from prism.cli import main

sys.exit(main())
