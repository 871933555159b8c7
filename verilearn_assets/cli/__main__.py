import sys

from verilearn_assets.cli import main

sys.exit(main())
