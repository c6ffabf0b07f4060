"""How risky a shell command is: the shell parser and the rules of the risk classifier."""
