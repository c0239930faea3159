/** A command line that cannot be run as given (unknown option, missing file argument, ...). */
export class UsageError extends Error {}
