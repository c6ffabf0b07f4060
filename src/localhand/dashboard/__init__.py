"""The dashboard: runs list, live run view and plan view, starting tasks; FastAPI + uvicorn.

Needs the ``dashboard`` extra (``pip install 'localhand[dashboard]'``)::

    from localhand.dashboard import start_dashboard
    server = start_dashboard(store, port=0)       # a background thread on 127.0.0.1
    print(server.url)       # http://127.0.0.1:PORT/?token=...: every request needs the token
    server.stop()

Tasks started from the page may only use workspaces under the configured roots (see
``settings``), and their verify commands are approved on the page when the policy says so.
"""

from localhand.dashboard.app import create_app
from localhand.dashboard.security import check_bind
from localhand.dashboard.server import DEFAULT_PORT, DashboardServer, start_dashboard

__all__ = ["DEFAULT_PORT", "DashboardServer", "check_bind", "create_app", "start_dashboard"]
