"""Settings of the sync service."""

TIMEOUT_SECONDS = 30
RETRIES = 3
BASE_URL = "http://localhost:8000"
