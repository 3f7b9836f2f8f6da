"""Container formats read before a reader sees them: ZIP packages (Office documents) and OLE2 compound
files (encrypted Office documents, legacy .doc/.xls/.ppt). The bomb guard for ZIPs is the gzip one's
rule (engram.pipeline.readers.gunzip): nothing may expand past the file-size limit."""

from __future__ import annotations

import io
import zipfile

from engram.documents.failures import CorruptDocument, DecompressionBomb, EncryptedDocument, UnsupportedType

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ZIP_MAGIC = b"PK\x03\x04"
# More members than any real Office file has (a large deck has a few thousand): a bomb of small files.
MAX_ZIP_MEMBERS = 20_000

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
OLE = "application/x-ole-storage"
LEGACY_OFFICE = ("application/msword", "application/vnd.ms-excel", "application/vnd.ms-powerpoint")
# The main part each OOXML package names in [Content_Types].xml, by its conventional path.
_OOXML_MAIN_PARTS = (("word/document.xml", DOCX), ("xl/workbook.xml", XLSX), ("ppt/presentation.xml", PPTX))


def ooxml_type(data: bytes) -> str | None:
    """DOCX, XLSX or PPTX for a ZIP that is an Office package (read from its directory, nothing
    decompressed); None for any other ZIP, or one too broken to list."""
    try:
        names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        return None
    if "[Content_Types].xml" not in names:
        return None
    return next((content_type for part, content_type in _OOXML_MAIN_PARTS if part in names), None)


def check_zip(data: bytes, max_bytes: int, what: str) -> None:
    """Refuse a ZIP whose members would expand past `max_bytes` in all (their declared sizes: zipfile
    never yields more than a member declares, and fails on a member that lies), or has absurdly many."""
    try:
        members = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise CorruptDocument(f"the {what} is not a readable ZIP package: {exc}") from None
    if len(members) > MAX_ZIP_MEMBERS:
        raise DecompressionBomb(
            f"the {what} holds {len(members)} files (more than {MAX_ZIP_MEMBERS}): refused as a "
            "decompression bomb"
        )
    expanded = sum(member.file_size for member in members)
    if expanded > max_bytes:
        raise DecompressionBomb(
            f"the {what} expands to {expanded} bytes ({len(data)} bytes compressed), past the limit of "
            f"{max_bytes}: refused as a decompression bomb"
        )


def refuse_ole(data: bytes, what: str) -> None:
    """An Office file that is an OLE2 compound file is either encrypted (the OOXML package inside is
    encrypted: Word, Excel and PowerPoint save password-protected files this way) or a legacy binary
    .doc/.xls/.ppt; neither can be read. Raises the failure that says which."""
    import olefile

    try:
        ole = olefile.OleFileIO(data)
    except Exception as exc:  # olefile raises OSError and its own errors for damaged files
        raise CorruptDocument(f"the {what} is damaged (an unreadable OLE2 compound file): {exc}") from None
    with ole:
        encrypted = ole.exists("EncryptedPackage") or ole.exists("EncryptionInfo")
    if encrypted:
        raise EncryptedDocument(f"the {what} is password-protected (encrypted): send an unprotected copy")
    raise UnsupportedType(
        f"the {what} is in a legacy binary Office format (.doc, .xls or .ppt): save it as .docx, .xlsx "
        "or .pptx and send it again"
    )
