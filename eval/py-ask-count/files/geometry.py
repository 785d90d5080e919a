import math


def circle_area(r):
    return math.pi * r * r


def circle_perimeter(r):
    return 2 * math.pi * r


def square_area(a):
    return a * a


def rectangle_area(w, h):
    return w * h


def triangle_area(b, h):
    return b * h / 2
