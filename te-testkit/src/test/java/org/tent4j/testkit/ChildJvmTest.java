package org.tent4j.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import org.junit.jupiter.api.Test;

/** A child JVM's answers are told apart from the lines it prints on its own. */
class ChildJvmTest {
    /** Prints "DONE early" before answering its first command, as a child whose task ends while a test asks. */
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("READY");
        for (String line; (line = in.readLine()) != null && !line.equals("EXIT"); ) {
            System.out.println("DONE early");
            System.out.println("ANSWER " + line);
        }
    }

    @Test
    void aLinePrintedBeforeTheAnswerIsKeptForLaterNotTakenForTheAnswer() throws Exception {
        try (ChildJvm child = ChildJvm.start(ChildJvmTest.class)) {
            child.awaitLine("READY", ChildJvm.DEFAULT_TIMEOUT);
            assertEquals("ANSWER one", child.ask("one", "ANSWER "));
            assertEquals("DONE early", child.awaitLine("DONE", Duration.ofSeconds(10)), "the line before the answer");
            assertEquals("ANSWER two", child.ask("two", "ANSWER "));
            assertEquals("DONE early", child.next(Duration.ofSeconds(10)));
        }
    }
}
