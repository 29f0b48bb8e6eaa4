package org.tent4j.api;

/** A configuration key is unknown or its value is bad. {@link #key()} names the key. */
public final class ConfigException extends TransferException {
    /** The key that was wrong. */
    private final String key;

    /**
     * A bad key or value.
     *
     * @param key     the key
     * @param message what is wrong with it; the exception's message prefixes the key
     */
    public ConfigException(String key, String message) {
        super(ErrorCode.CONFIG, "config key '" + key + "': " + message);
        this.key = key;
    }

    /**
     * A bad key or value, caused by another failure (an unreadable file).
     *
     * @param key     the key
     * @param message what is wrong with it; the exception's message prefixes the key
     * @param cause   the underlying failure
     */
    public ConfigException(String key, String message, Throwable cause) {
        super(ErrorCode.CONFIG, "config key '" + key + "': " + message, cause);
        this.key = key;
    }

    /**
     * The key that was wrong.
     *
     * @return the dotted key
     */
    public String key() {

        return key;
    }
}
