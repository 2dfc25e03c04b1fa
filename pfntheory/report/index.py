from .html import build_index
