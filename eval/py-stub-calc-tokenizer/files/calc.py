"""A tiny four-function calculator: tokenize() -> to_rpn() -> evaluate()."""

PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


class Tokenizer:
    """Splits an expression into (kind, value) tokens; the format is in SPEC.md."""

    def __init__(self, src):
        self.src = src

    def tokens(self):
        # TODO: not written yet -- see SPEC.md
        raise NotImplementedError("Tokenizer.tokens")


def tokenize(src):
    return Tokenizer(src).tokens()


def to_rpn(tokens):
    """Shunting-yard: infix tokens -> reverse Polish order."""
    out, ops = [], []
    for kind, value in tokens:
        if kind == "num":
            out.append((kind, value))
        elif kind == "op":
            while ops and ops[-1][1] != "(" and PRECEDENCE[ops[-1][1]] >= PRECEDENCE[value]:
                out.append(ops.pop())
            ops.append((kind, value))
        elif value == "(":
            ops.append((kind, value))
        else:
            while ops and ops[-1][1] != "(":
                out.append(ops.pop())
            if not ops:
                raise ValueError("unbalanced ')'")
            ops.pop()
    while ops:
        if ops[-1][1] == "(":
            raise ValueError("unbalanced '('")
        out.append(ops.pop())
    return out


def evaluate(src):
    """evaluate('2 * (3 + 4)') -> 14"""
    stack = []
    for kind, value in to_rpn(tokenize(src)):
        if kind == "num":
            stack.append(value)
            continue
        if len(stack) < 2:
            raise ValueError("missing operand")
        b, a = stack.pop(), stack.pop()
        if value == "+":
            stack.append(a + b)
        elif value == "-":
            stack.append(a - b)
        elif value == "*":
            stack.append(a * b)
        else:
            stack.append(a / b)
    if len(stack) != 1:
        raise ValueError("malformed expression")
    return stack[0]
