package offline
