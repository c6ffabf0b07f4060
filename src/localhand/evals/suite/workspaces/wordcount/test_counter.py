import unittest

from counter import word_count


class CounterTest(unittest.TestCase):
    def test_spaces_and_lines(self):
        self.assertEqual(word_count("one  two\nthree"), 3)

    def test_empty(self):
        self.assertEqual(word_count(""), 0)


if __name__ == "__main__":
    unittest.main()
