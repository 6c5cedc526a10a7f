"""Embedded resources: an icon, test vectors and escapes."""
import base64
import zlib

MAGIC = b'\x89PNG\r\n\x1a\n'
SEP = '\n'.join([r'\d+', u'caf\u00e9', b'abc'.decode()])
HASH = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
GREETING = base64.b64encode(b'hello, notes app user').decode()
ICON = (
    'eJxjYGRiZmFlY+fg5OLm4eXjFxAUEhYRFROXkJSSlpGVk1dQVFJWUVVT19DU0tbR1dM3MDQy'
    'NjE1M7ewtLK2sbWzd3B0cnZxdXP38PTy9vH18w8IDAoOCQ0Lj4iMio6JjYtPSExKTklNS8/I'
    'zMrOyc3LLygsKi4pLSuvqKyqrqmtq29obGpuaW1r7+js6u7p7eufMHHS5ClTp02fMXPW7Dlz'
    '581fsHDR4iVLly1fsXLV6jVr163fsHHT5i1bt23fsXPX7j179+0/cPDQ4SNHjx0/cfLU6TNn'
    'z52/cPHS5StXr12/cfPW7Tt3791/8PDR4ydPnz1/8fLV6zdv373/8PHT5y9fv33/8fPX7z9/'
    '//1nGPX/qP9HsP8B5Mn+EA=='
)


def icon_bytes():
    """The icon, inflated."""
    return zlib.decompress(base64.b64decode(ICON))


def greeting():
    return base64.b64decode(GREETING).decode()
