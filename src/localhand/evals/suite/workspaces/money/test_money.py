import unittest

from money import format_price


class MoneyTest(unittest.TestCase):
    def test_thousands(self):
        self.assertEqual(format_price(1234.5), "$1,234.50")

    def test_whole(self):
        self.assertEqual(format_price(3), "$3.00")


if __name__ == "__main__":
    unittest.main()
