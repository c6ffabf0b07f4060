import unittest

from cart import add_item


class CartTest(unittest.TestCase):
    def test_new_carts_are_empty(self):
        self.assertEqual(add_item("apple"), ["apple"])
        self.assertEqual(add_item("pear"), ["pear"])

    def test_given_cart(self):
        cart = ["milk"]
        self.assertIs(add_item("bread", cart), cart)
        self.assertEqual(cart, ["milk", "bread"])


if __name__ == "__main__":
    unittest.main()
