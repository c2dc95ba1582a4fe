"""From a trained model to a verified one: formal-language tasks, a tiny PyTorch encoder and its
training, post-training quantization into a spec, hand-built exact encoders to compare against.

Sits on top: imports ``model``, ``smt`` and ``queries``; nothing in ``verify`` imports it.
"""
