package org.tent4j.store.client;

import org.tent4j.store.StoreException;

/** One item of a batch: its value, or the error that item met (the others go ahead). */
public record Outcome<T>(T value, StoreException error) {
    public static <T> Outcome<T> of(T value) {
        return new Outcome<>(value, null);
    }

    public static <T> Outcome<T> failed(StoreException error) {
        return new Outcome<>(null, error);
    }

    public boolean ok() {
        return error == null;
    }

    /** The value, or the item's error thrown. */
    public T get() {
        if (error != null) {
            throw error;
        }
        return value;
    }
}
