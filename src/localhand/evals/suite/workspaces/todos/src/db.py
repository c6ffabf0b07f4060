def connect(path):
    # TODO: retry when the database is locked
    return open(path)  # TODO close it
