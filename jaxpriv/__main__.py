import sys

from jaxpriv.cli import main

sys.exit(main())
