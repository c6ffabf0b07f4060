"""Checks config.ini."""

import configparser
import sys

config = configparser.ConfigParser()
if not config.read("config.ini"):
    sys.exit("cannot read config.ini")
found = {section: dict(config[section]) for section in config.sections()}
expected = {
    "server": {"host": "127.0.0.1", "port": "9000", "workers": "4"},
    "database": {"name": "app.db"},
}
if found != expected:
    sys.exit(f"config.ini holds {found}; expected {expected}")
print("config.ini is right")
