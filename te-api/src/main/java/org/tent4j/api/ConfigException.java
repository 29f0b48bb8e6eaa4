package org.tent4j.api;

/** A configuration key is unknown or its value is bad. {@link #key()} names the key. */
public final class ConfigException extends TransferException {
    private final String key;

    public ConfigException(String key, String message) {
        super(ErrorCode.CONFIG, "config key '" + key + "': " + message);
        this.key = key;
    }

    public ConfigException(String key, String message, Throwable cause) {
        super(ErrorCode.CONFIG, "config key '" + key + "': " + message, cause);
        this.key = key;
    }

    public String key() {
        return key;
    }
}
