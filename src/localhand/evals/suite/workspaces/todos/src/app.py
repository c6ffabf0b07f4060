def main():
    # TODO: read the settings from a file
    print("tracker")
    # TODO: exit with a status code
