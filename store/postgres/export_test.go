package postgres

// Migrations are the schema's versions, for tests that build an older one.
var Migrations = migrations
