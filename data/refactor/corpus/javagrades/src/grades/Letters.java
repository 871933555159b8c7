package grades;

/** Letter grades from averages. */
public class Letters {
    public static String letter(double average) {
        if (average >= 90) {
            return "A";
        } else if (average >= 75) {
            return "B";
        } else if (average >= 60) {
            return "C";
        }
        return "F";
    }

    public static boolean passing(String letter) {
        return !letter.equals("F");
    }

    public static String describe(String student, double average) {
        String grade = letter(average);
        if (grade.equals("A")) {
            return student + ": excellent";
        }
        return student + ": " + grade;
    }
}
