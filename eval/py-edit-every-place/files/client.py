import urllib.request


def get(url):
    return urllib.request.urlopen(url, timeout=30).read()


def post(url, data):
    req = urllib.request.Request(url, data=data, method="POST")
    return urllib.request.urlopen(req, timeout=30).read()


def head(url):
    req = urllib.request.Request(url, method="HEAD")
    return urllib.request.urlopen(req, timeout=30).status
