import unittest

from mathutil import gcd


class GcdTest(unittest.TestCase):
    def test_gcd(self):
        self.assertEqual(gcd(12, 18), 6)


if __name__ == "__main__":
    unittest.main()
