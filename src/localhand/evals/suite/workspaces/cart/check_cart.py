"""Checks cart.py."""

import sys

from cart import add_item

first, second = add_item("apple"), add_item("pear")
if first != ["apple"] or second != ["pear"]:
    sys.exit(f"carts leak between calls: {first!r}, {second!r}")
cart = ["milk"]
if add_item("bread", cart) is not cart or cart != ["milk", "bread"]:
    sys.exit(f"a given cart is not extended in place: {cart!r}")
print("cart.py is right")
