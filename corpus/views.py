"""HTML-side views of the corpus app: staff-only download of release files."""
from __future__ import annotations

import mimetypes

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from .models import Release
from .releases import release_file_path

_CONTENT_TYPES = {".jsonl": "application/x-ndjson", ".md": "text/markdown; charset=utf-8"}


@require_GET
@login_required
def release_file(request, pk: int, name: str):
    """Stream one file of a published release. Only names recorded in ReleaseFile are served."""
    if not request.user.is_staff:
        raise PermissionDenied("release files are available to staff only")
    release = get_object_or_404(Release, pk=pk, status=Release.Status.PUBLISHED)
    path = release_file_path(release, name)
    if path is None or not path.is_file():
        raise Http404(f"release {release} has no file {name!r}")
    suffix = path.suffix.lower()
    content_type = _CONTENT_TYPES.get(suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return FileResponse(open(path, "rb"), as_attachment=True, filename=path.name, content_type=content_type)
