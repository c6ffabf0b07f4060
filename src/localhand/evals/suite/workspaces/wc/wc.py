"""Count the lines, words and characters of a file."""

import argparse


def counts(text):
    return len(text.splitlines()), len(text.split()), len(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path")
    args = parser.parse_args(argv)
    with open(args.path, encoding="utf-8") as handle:
        lines, words, chars = counts(handle.read())
    print(lines, words, chars, args.path)


if __name__ == "__main__":
    main()
