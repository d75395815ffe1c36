//! ANSI styles for the cards sink: real escape codes when colour is on, empty strings otherwise,
//! so layout code is the same either way.

#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub reset: &'static str,
    pub bold: &'static str,
    pub dim: &'static str,
    pub red: &'static str,
    pub green: &'static str,
    pub yellow: &'static str,
    pub cyan: &'static str,
}

impl Style {
    pub fn new(color: bool) -> Self {
        if color {
            Style {
                reset: "\x1b[0m",
                bold: "\x1b[1m",
                dim: "\x1b[2m",
                red: "\x1b[31m",
                green: "\x1b[32m",
                yellow: "\x1b[33m",
                cyan: "\x1b[36m",
            }
        } else {
            Style { reset: "", bold: "", dim: "", red: "", green: "", yellow: "", cyan: "" }
        }
    }
}
