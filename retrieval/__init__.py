"""Premise retrieval: encoder, index, accessible-premise filter, progressive training and
recall metrics."""
