def rounded(d, digits=4):
    return {k: round(v, digits) if isinstance(v, float) else v for k, v in d.items()}
