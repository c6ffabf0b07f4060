"""Convert a Celsius temperature to Fahrenheit: python3 cli.py 100 prints 212.0"""

import sys

from convert import c_to_f


def main(argv):
    value = float(argv[0])
    print(c_to_f(value))


if __name__ == "__main__":
    main(sys.argv[1:])
