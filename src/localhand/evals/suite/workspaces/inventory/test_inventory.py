import unittest

from inventory import Inventory


class InventoryTest(unittest.TestCase):
    def test_adds_up(self):
        stock = Inventory()
        stock.add("Widget ", "1,200")
        stock.add(" widget", "30")
        self.assertEqual(stock.count("WIDGET"), 1230)


if __name__ == "__main__":
    unittest.main()
