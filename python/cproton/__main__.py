"""`python -m cproton ...` is the `cproton` command."""
from .proton import main

if __name__ == "__main__":
    main()
