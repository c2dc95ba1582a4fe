"""Placeholder until this command family lands; see agent/commands/__init__.py."""

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    del subparsers
