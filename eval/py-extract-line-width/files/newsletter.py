from banner import banner, rule
from wrap import too_long, wrap_paragraphs

BODY = """The garden club meets on Saturday at ten. Bring gloves, a trowel and
anything you would like to swap: seedlings, cuttings or spare seeds.

Tea and cake afterwards in the hall. Members who cannot make it can leave
their swaps with Margaret by Friday evening."""


def render():
    return "\n".join([banner("Garden club news"), wrap_paragraphs(BODY), rule("-")])


if __name__ == "__main__":
    text = render()
    print(text)
    assert not too_long(text.splitlines())
