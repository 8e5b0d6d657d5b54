//! Search quality on a corpus with planted answers: Japanese and English
//! chapters of generated filler, lines planted in chosen chapters,
//! segmentation traps (京都 in 東京都, 東京 in 東京タワー), width forms, word
//! forms, an edited chapter and a deleted one. recall@5 of the planted
//! answers and hits that must never come (forbidden), on both backends.

use atelier_agent::search::SearchOptions;
use atelier_agent::store::{Db, Origin};

const JA_FILLER: &[&str] = &[
    "駅員は古い鞄を手に取った。",
    "雨が上がった。",
    "少女は何も言えなかった。",
    "港の市場には、誰もいなかった。",
    "「明日の朝までに」",
    "風が強くなった。",
    "手紙の写真には、花束が残っていた。",
    "祖父は少し笑った。",
];
const EN_FILLER: &[&str] = &[
    "The wind backed to the north.",
    "Agnes carried the charts by the long pier.",
    "Nobody at the tavern said a word about the keys.",
    "Rain came over the hill.",
    "The postmistress wrapped a letter.",
];

/// (chapter index, planted line); chapters 0..40 are Japanese, 40..60 English.
const PLANTS: &[(usize, &str)] = &[
    (3, "\u{3000}机の上の砂時計が、最後の一粒を落とした。"),
    (5, "\u{3000}祖母は東京都に住んでいる。"),
    (7, "\u{3000}秋、二人は京都へ行った。"),
    (9, "\u{3000}東京タワーの灯りが、雨に滲んでいた。"),
    (11, "\u{3000}花火大会の夜、二人は橋の上にいた。"),
    (13, "\u{3000}夜になった。大会の準備で、花火師は忙しかった。"),
    (15, "ﾊﾟｿｺﾝの画面に、ＡＢＣ１２３と表示された。"),
    (17, "\u{3000}父の万年筆で、最後の手紙を書いた。"),
    (19, "\u{3000}遊園地の観覧車が、夕日の中で止まっていた。"),
    (21, "\u{3000}東京の冬は乾いていた。"),
    (42, "Everyone said the lighthouse keeper had not slept in a week."),
    (45, "The keepers of the old lighthouses were sailing home."),
    (48, "A rusted harpoon hung above the door of the tavern."),
    (51, "By evening they were sailing past the point."),
];

/// (query, chapters that must be in the first five, chapters that must never come).
const QUERIES: &[(&str, &[usize], &[usize])] = &[
    ("砂時計", &[3], &[]),
    ("京都", &[7], &[5]),
    ("東京", &[21], &[9, 7]),
    ("東京タワー", &[9], &[21]),
    ("花火大会の夜", &[11], &[]),
    ("花火大会", &[11, 13], &[]),
    ("パソコン", &[15], &[]),
    ("ﾊﾟｿｺﾝ", &[15], &[]),
    ("abc123", &[15], &[]),
    ("羅針盤", &[17], &[]), // the edited chapter's new text
    ("万年筆", &[], &[17]), // its old text
    ("観覧車", &[], &[19]), // the deleted chapter
    ("lighthouse keeper", &[42, 45], &[]),
    ("lighthouses", &[42, 45], &[]),
    ("sail", &[45, 51], &[]),
    ("harpoons", &[48], &[]),
    ("宇宙飛行士", &[], &[]),
    ("zeppelin", &[], &[]),
];

fn filler(i: usize, seed: &mut u32) -> String {
    let mut next = || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 17;
        *seed ^= *seed << 5;
        *seed as usize
    };
    let mut text = String::new();
    for _ in 0..40 {
        if i < 40 {
            text.push('\u{3000}');
            text.push_str(JA_FILLER[next() % JA_FILLER.len()]);
        } else {
            text.push_str(EN_FILLER[next() % EN_FILLER.len()]);
            text.push(' ');
        }
        text.push('\n');
    }
    text
}

/// recall@5 and forbidden hits of [`QUERIES`] on a fresh corpus in `db`.
pub async fn measure(db: &Db) -> (f64, usize, usize) {
    let project = db.create_project("Quality", "").await.unwrap();
    let mut seed = 0x5eed_u32;
    let mut ids = Vec::new();
    for i in 0..60 {
        let mut text = filler(i, &mut seed);
        for (_, line) in PLANTS.iter().filter(|(at, _)| *at == i) {
            // After the middle line of the filler.
            let middle = text.match_indices('\n').nth(20).map_or(text.len(), |(at, _)| at + 1);
            text.insert_str(middle, &format!("{line}\n"));
        }
        let title = if i < 40 { format!("第{}章", i + 1) } else { format!("Chapter {}", i + 1) };
        ids.push(db.add_section(&project.id, None, &title, &text).await.unwrap().id);
    }
    // The edited chapter: 万年筆 becomes 羅針盤 (the agent's edit); the deleted one goes.
    let mut edited = db.section(&ids[17]).await.unwrap();
    edited.content = edited.content.replace("父の万年筆で", "祖父の羅針盤で");
    db.save_section(&edited, Some(Origin::Agent), "edit_manuscript").await.unwrap();
    db.delete_section(&ids[19], Some(Origin::User)).await.unwrap();
    let (mut expected, mut found, mut forbidden) = (0, 0, 0);
    for (query, want, never) in QUERIES {
        let answer = db.search(query, &SearchOptions { limit: Some(10.0), ..SearchOptions::default() }).await.unwrap();
        let hits: Vec<&str> = answer.hits.iter().map(|h| h.id.as_str()).collect();
        for chapter in *want {
            expected += 1;
            if hits.iter().take(5).any(|h| *h == ids[*chapter]) {
                found += 1;
            } else {
                eprintln!("quality: {query}: chapter {chapter} not in the first five ({hits:?})");
            }
        }
        for chapter in *never {
            if hits.contains(&ids[*chapter].as_str()) {
                forbidden += 1;
                eprintln!("quality: {query}: chapter {chapter} must not be found");
            }
        }
    }
    (found as f64 / expected as f64, expected, forbidden)
}
