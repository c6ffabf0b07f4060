def clean(text):
    return text.strip()  # TODO: normalise unicode
