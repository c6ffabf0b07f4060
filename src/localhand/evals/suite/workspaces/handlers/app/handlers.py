"""Request handlers for the user admin."""

USERS = {"ada": {"admin": True}, "ken": {"admin": False}}


def list_users():
    return sorted(USERS)


def get_user(name):
    if name not in USERS:
        raise KeyError(name)
    return USERS[name]


def delete_user(name, by):
    if not USERS.get(by, {}).get("admin"):
        raise PermissionError(f"{by} may not delete users")
    return USERS.pop(name)


def rename_user(old, new):
    if new in USERS:
        raise ValueError(f"{new} exists")
    USERS[new] = USERS.pop(old)
