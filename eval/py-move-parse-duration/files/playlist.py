import utils


class Playlist:
    def __init__(self, name):
        self.name = name
        self.tracks = []

    def add(self, title, length):
        self.tracks.append((title, utils.parse_duration(length)))

    def total(self):
        return utils.format_seconds(sum(s for _, s in self.tracks))

    def filename(self):
        return utils.slugify(self.name) + ".m3u"
