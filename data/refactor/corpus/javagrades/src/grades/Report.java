package grades;

import java.util.List;

/** A printed report of a roster. */
public class Report {
    public static String line(Roster roster, String student) {
        double avg = roster.average(student);
        String shown = "" + Math.round(avg);
        return student + " " + shown + " " + Letters.letter(avg);
    }

    public static String render(Roster roster) {
        if (roster.isEmpty()) {
            return "no students";
        }
        StringBuilder out = new StringBuilder();
        List<String> names = roster.students();
        for (String name : names) {
            if (out.length() != 0) {
                out.append("\n");
            }
            out.append(line(roster, name));
        }
        return out.toString();
    }

    public static String count(Roster roster) {
        return "" + roster.students().size();
    }
}
