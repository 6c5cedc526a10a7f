"""coffer: the Python client of cofferd (on httpx), synchronous (`Coffer`) and asyncio
(`AsyncCoffer`).

    from coffer import Client
    c = Client("http://127.0.0.1:7700", key)
    vol = c.volumes.create("notes")
    vol.write("docs/a.md", "# hello")
    print(vol.read("docs/a.md").text)
"""

from ._files import AsyncDownload, Download
from ._http import AsyncEventStream, AsyncItems, AsyncStreamResponse, EventStream, Response, StreamResponse
from .agents import Agent, AgentFiles, Agents, AgentTools, Attachment, RunHandle
from .aio import AsyncCoffer
from .client import Client, Coffer, Keys
from .errors import (Blocked, CofferConnectionError, CofferError, CofferTimeout, Conflict,
                     Forbidden, Gone, InternalError, Locked, MergeConflict, NotFound,
                     PreconditionFailed,
                     RangeNotSatisfiable, RateLimited, TooLarge, Unauthorized, Unavailable,
                     UnsupportedMediaType, ValidationError)
from .models import (Artifact, Change, ChangeBy, Event, FileData, FileVersion, Record, Webhook,
                     WebhookDelivery)
from .relay import Relay, RelaySession
from .subjects import Subject
from .turns import Turn, Turns
from .volumes import Runtime, Volume, Volumes
from .webhooks import WebhookVerificationError, Webhooks, verify_webhook

__version__ = "0.1.0"

__all__ = [
    "Client", "Coffer", "AsyncCoffer", "AsyncDownload", "AsyncEventStream", "AsyncItems",
    "AsyncStreamResponse", "RunHandle", "Runtime",
    "Keys", "Volume", "Volumes", "Agent", "Agents", "AgentFiles", "AgentTools",
    "Attachment", "Subject", "Turn", "Turns", "Relay", "RelaySession", "Download",
    "EventStream", "Response", "StreamResponse", "Artifact", "Event", "FileData", "Record",
    "Change", "ChangeBy", "FileVersion", "Webhooks", "Webhook", "WebhookDelivery",
    "WebhookVerificationError", "verify_webhook", "MergeConflict",
    "CofferError", "CofferConnectionError", "CofferTimeout", "ValidationError",
    "Unauthorized", "Forbidden", "NotFound", "Conflict", "Gone", "PreconditionFailed",
    "TooLarge", "UnsupportedMediaType", "RangeNotSatisfiable", "Blocked", "Locked",
    "RateLimited", "InternalError", "Unavailable", "__version__",
]
