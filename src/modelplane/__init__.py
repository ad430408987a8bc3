"""Modelplane: one control plane for a fleet of GPU clusters serving AI models."""

__version__ = "0.1.0"
