"""Plane geometry helpers."""

import math


def area_circle(r):
    return math.pi * r * r


def area_rect(w, h):
    return w * h


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def distance(self, other):
        return math.hypot(self.x - other.x, self.y - other.y)


def perimeter_rect(w, h):
    return 2 * (w + h)


def scale(points, factor):
    def one(p):
        return Point(p.x * factor, p.y * factor)

    return [one(p) for p in points]
