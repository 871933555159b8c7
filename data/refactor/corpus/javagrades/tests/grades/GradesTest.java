package grades;

import java.util.Arrays;

public class GradesTest {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    public static void testRoster() {
        Roster r = new Roster();
        check(r.isEmpty(), "empty at first");
        r.add("ann", 90);
        r.add("ann", 80);
        r.add("bob", 50);
        check(!r.isEmpty(), "not empty");
        check(r.average("ann") == 85.0, "ann's average");
        check(r.average("zed") == 0.0, "unknown student");
        check(r.of("bob").equals(Arrays.asList(50)), "bob's marks");
        check(r.students().equals(Arrays.asList("ann", "bob")), "sorted names");
        try {
            r.add("", 1);
            check(false, "empty name accepted");
        } catch (IllegalArgumentException expected) {
            check(expected.getMessage().equals("no name"), "message");
        }
    }

    public static void testLetters() {
        check(Letters.letter(95).equals("A"), "A");
        check(Letters.letter(80).equals("B"), "B");
        check(Letters.letter(61).equals("C"), "C");
        check(Letters.letter(10).equals("F"), "F");
        check(!Letters.passing("F") && Letters.passing("C"), "passing");
        check(Letters.describe("ann", 99).equals("ann: excellent"), "describe A");
        check(Letters.describe("bob", 70).equals("bob: C"), "describe C");
    }

    public static void testReport() {
        Roster r = new Roster();
        check(Report.render(r).equals("no students"), "empty report");
        r.add("bob", 70);
        r.add("ann", 91);
        check(Report.render(r).equals("ann 91 A\nbob 70 C"), Report.render(r));
        check(Report.count(r).equals("2"), "count");
    }
}
