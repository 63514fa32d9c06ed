"""HTML-side views of the corpus app: staff-only download of release files."""

from __future__ import annotations

import logging
import mimetypes
from pathlib import Path

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from argora import access

from .models import Release
from .releases import ReleaseFileChanged, open_verified

log = logging.getLogger(__name__)

_CONTENT_TYPES = {".jsonl": "application/x-ndjson", ".md": "text/markdown; charset=utf-8"}


@require_GET
@login_required
def release_file(request, pk: int, name: str):
    """Stream one file of a published release: only names recorded in ReleaseFile, and only while their bytes match
    the checksum recorded at publication (a changed file is refused with 409)."""
    release = get_object_or_404(Release, pk=pk, status=Release.Status.PUBLISHED)
    if not access.release_visible(request.user, release):  # releases of projects outside the user's teams
        raise Http404(f"no release {pk}")
    try:
        fh = open_verified(release, name)
    except ReleaseFileChanged as exc:
        log.error("release %s: %s", release, exc)
        return HttpResponse(
            f"Release {release}: {exc}. It is not served; restore the file or publish a new version.\n",
            status=409,
            content_type="text/plain; charset=utf-8",
        )
    if fh is None:
        raise Http404(f"release {release} has no file {name!r}")
    suffix = Path(name).suffix.lower()
    content_type = _CONTENT_TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"
    return FileResponse(fh, as_attachment=True, filename=Path(name).name, content_type=content_type)
