"""The ASGI application uvicorn serves in tests/embedded/test_asgi.py."""

from django.core.asgi import get_asgi_application

import steady_queue.embedded

application = steady_queue.embedded.lifespan(get_asgi_application())
