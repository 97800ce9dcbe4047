"""The vocabularies the generated catalog draws from: categories, product types, attributes, options.

The shape follows WebShop's scraped data: a coarse ``category`` (beauty, food, fashion, furniture,
electronics), a ``query`` (the search term a product was found under, e.g. "men's running shoes"),
an Amazon-style ``product_category`` path joined by " › ", attribute phrases ("machine wash",
"gluten free"), and lowercase option values per option name ("color", "size", "flavor name").
Two extra categories (sports, pets) exist only in the ``unseen`` split.
"""

from __future__ import annotations

from dataclasses import dataclass

# --- option pools -----------------------------------------------------------------------------
COLORS = (
    "black", "white", "navy blue", "grey", "light grey", "red", "burgundy", "pink", "rose gold",
    "beige", "brown", "olive green", "dark green", "sky blue", "purple", "yellow", "orange", "teal",
    "khaki", "silver", "gold", "ivory", "charcoal", "coral", "mint", "lavender", "multicolor",
)  # fmt: skip
OPTION_POOLS: dict[str, tuple[str, ...]] = {
    "colors": COLORS,
    "apparel": ("x-small", "small", "medium", "large", "x-large", "xx-large", "3x-large"),
    "shoes": ("6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "12", "13"),
    "packs": (
        "pack of 1",
        "pack of 2",
        "pack of 3",
        "pack of 4",
        "pack of 6",
        "pack of 12",
        "pack of 24",
    ),
    "volumes": (
        "1 fl oz",
        "2 fl oz",
        "3.4 fl oz",
        "8 fl oz",
        "12 fl oz",
        "16.9 fl oz",
        "33.8 fl oz",
    ),
    "weights": ("2 ounce", "4 ounce", "8 ounce", "12 ounce", "1 pound", "2 pound", "5 pound"),
    "widths": ("20 inch", "24 inch", "30 inch", "36 inch", "42 inch", "48 inch", "60 inch"),
    "rugs": ("2 x 3 ft", "3 x 5 ft", "4 x 6 ft", "5 x 7 ft", "6 x 9 ft", "8 x 10 ft", "9 x 12 ft"),
    "beds": ("twin", "twin xl", "full", "queen", "king", "california king"),
    "lengths": ("3 ft", "6 ft", "10 ft", "15 ft", "25 ft", "50 ft"),
    "mah": ("5000mah", "10000mah", "20000mah", "26800mah"),
    "phones": (
        "iphone 15",
        "iphone 15 pro",
        "iphone 14",
        "galaxy s24",
        "galaxy s23",
        "pixel 8",
        "pixel 8 pro",
    ),
    "coffee": (
        "french roast",
        "colombian",
        "hazelnut",
        "vanilla",
        "caramel",
        "breakfast blend",
        "decaf",
    ),
    "tea": ("jasmine", "earl grey", "chamomile", "peppermint", "matcha", "lemon ginger", "sencha"),
    "snacks": (
        "chocolate chip",
        "peanut butter",
        "sea salt",
        "honey almond",
        "blueberry",
        "cinnamon",
        "original",
    ),
    "sauces": ("original", "extra hot", "garlic", "chipotle", "habanero", "mango"),
    "scents": (
        "lavender",
        "coconut",
        "unscented",
        "vanilla",
        "citrus",
        "rose",
        "eucalyptus",
        "tea tree",
        "sandalwood",
    ),
    "shades": ("ruby red", "nude", "coral pink", "berry", "mauve", "cherry", "plum", "peach"),
    "dumbbells": (
        "5 pound",
        "10 pound",
        "15 pound",
        "20 pound",
        "25 pound",
        "30 pound",
        "40 pound",
    ),
    "pet_sizes": ("small", "medium", "large", "x-large"),
    "liters": ("20 liter", "30 liter", "40 liter", "50 liter", "65 liter"),
    "tents": ("2 person", "3 person", "4 person", "6 person", "8 person"),
    "bottles": ("12 oz", "18 oz", "24 oz", "32 oz", "40 oz", "64 oz"),
    "materials": ("cotton", "linen", "polyester", "velvet", "microfiber", "wool blend"),
    "woods": ("walnut", "oak", "espresso", "natural", "white wash", "black oak"),
}
"""Each pool is ordered (sizes small to large) so a product's options read naturally."""

# option name (as shown on the item page) -> the pool a product type draws its values from
OPTION_NAMES = ("color", "size", "flavor name", "scent", "style", "item package quantity")


@dataclass(frozen=True)
class ProductType:
    """One kind of product: the search query it lives under, its title noun, its category path,
    its option names -> pools, its own attribute phrases and its price range in dollars."""

    query: str
    noun: str
    path: tuple[str, ...]
    options: tuple[tuple[str, str], ...]
    attributes: tuple[str, ...]
    price: tuple[float, float]
    audience: tuple[str, ...] = ()


@dataclass(frozen=True)
class Category:
    name: str
    root: str
    attributes: tuple[str, ...]
    types: tuple[ProductType, ...]


def _t(query, noun, path, options, attributes, price, audience=()):
    return ProductType(
        query, noun, tuple(path), tuple(options), tuple(attributes), price, tuple(audience)
    )


CATEGORIES: tuple[Category, ...] = (
    Category(
        "beauty",
        "Beauty & Personal Care",
        (
            "paraben free",
            "cruelty free",
            "long lasting",
            "sensitive skin",
            "natural ingredients",
            "travel size",
            "easy use",
            "dermatologist tested",
            "fragrance free",
            "vegan",
        ),
        (
            _t(
                "shampoo",
                "Shampoo",
                ("Hair Care", "Shampoo & Conditioner", "Shampoos"),
                [("scent", "scents"), ("size", "volumes")],
                ("sulfate free", "dry hair", "hair growth", "tea tree"),
                (6, 40),
            ),
            _t(
                "face moisturizer",
                "Face Moisturizer",
                ("Skin Care", "Face", "Moisturizers"),
                [("size", "volumes")],
                ("hyaluronic acid", "fine lines", "oil free", "dry skin"),
                (9, 60),
            ),
            _t(
                "lipstick",
                "Lipstick",
                ("Makeup", "Lips", "Lipstick"),
                [("color", "shades"), ("item package quantity", "packs")],
                ("matte finish", "highly pigmented", "long wear"),
                (5, 30),
            ),
            _t(
                "nail polish",
                "Nail Polish",
                ("Foot, Hand & Nail Care", "Nail Art & Polish", "Nail Polish"),
                [("color", "shades")],
                ("quick dry", "chip resistant", "high shine", "non toxic"),
                (4, 20),
            ),
            _t(
                "hair dryer",
                "Hair Dryer",
                ("Hair Care", "Styling Tools", "Hair Dryers"),
                [("color", "colors")],
                ("fast drying", "low noise", "ionic technology", "salon quality"),
                (20, 150),
            ),
            _t(
                "body lotion",
                "Body Lotion",
                ("Skin Care", "Body", "Lotions"),
                [("scent", "scents"), ("size", "volumes")],
                ("shea butter", "dry skin", "non greasy", "fast absorbing"),
                (6, 35),
            ),
            _t(
                "makeup brush set",
                "Makeup Brush Set",
                ("Tools & Accessories", "Makeup Brushes & Tools", "Brush Sets"),
                [("color", "colors")],
                ("synthetic bristles", "high quality", "storage case", "soft bristles"),
                (8, 45),
            ),
            _t(
                "perfume for women",
                "Eau de Parfum",
                ("Fragrance", "Women's", "Eau de Parfum"),
                [("scent", "scents"), ("size", "volumes")],
                ("long lasting", "gift set", "floral scent", "fresh scent"),
                (15, 120),
                ("Women's",),
            ),
        ),
    ),
    Category(
        "food",
        "Grocery & Gourmet Food",
        (
            "gluten free",
            "non gmo",
            "low sugar",
            "keto friendly",
            "sugar free",
            "usda organic",
            "individually wrapped",
            "high protein",
            "natural ingredients",
            "kosher certified",
        ),
        (
            _t(
                "coffee beans",
                "Whole Bean Coffee",
                ("Beverages", "Coffee, Tea & Cocoa", "Coffee", "Whole Coffee Beans"),
                [("flavor name", "coffee"), ("size", "weights")],
                ("medium roast", "dark roast", "fair trade", "single origin"),
                (8, 45),
            ),
            _t(
                "green tea",
                "Green Tea Bags",
                ("Beverages", "Coffee, Tea & Cocoa", "Tea", "Green Tea"),
                [("flavor name", "tea"), ("item package quantity", "packs")],
                ("caffeine free", "loose leaf", "antioxidant rich"),
                (4, 30),
            ),
            _t(
                "protein bars",
                "Protein Bars",
                ("Snack Foods", "Bars", "Protein Bars"),
                [("flavor name", "snacks"), ("item package quantity", "packs")],
                ("whey protein", "low carb", "plant based"),
                (10, 50),
            ),
            _t(
                "dark chocolate",
                "Dark Chocolate Bar",
                ("Snacks & Sweets", "Chocolate", "Chocolate Bars"),
                [("flavor name", "snacks"), ("item package quantity", "packs")],
                ("fair trade", "dairy free", "rich flavor"),
                (4, 35),
            ),
            _t(
                "olive oil",
                "Extra Virgin Olive Oil",
                ("Pantry Staples", "Cooking & Baking", "Oils", "Olive Oils"),
                [("size", "volumes"), ("item package quantity", "packs")],
                ("cold pressed", "first harvest", "glass bottle"),
                (8, 45),
            ),
            _t(
                "beef jerky",
                "Beef Jerky",
                ("Snack Foods", "Jerky & Dried Meats", "Beef Jerky"),
                [("flavor name", "sauces"), ("size", "weights")],
                ("grass fed", "high protein", "low fat", "ready eat"),
                (6, 40),
            ),
            _t(
                "hot sauce",
                "Hot Sauce",
                ("Pantry Staples", "Condiments & Salad Dressings", "Hot Sauce"),
                [("flavor name", "sauces"), ("item package quantity", "packs")],
                ("small batch", "no preservatives", "vegan"),
                (4, 25),
            ),
            _t(
                "granola",
                "Granola Cereal",
                ("Breakfast Foods", "Cereals", "Granola"),
                [("flavor name", "snacks"), ("size", "weights")],
                ("whole grain", "high fiber", "plant based"),
                (4, 30),
            ),
        ),
    ),
    Category(
        "fashion",
        "Clothing, Shoes & Jewelry",
        (
            "machine wash",
            "quick drying",
            "relaxed fit",
            "button closure",
            "long sleeve",
            "short sleeve",
            "elastic waistband",
            "polyester spandex",
            "cotton blend",
            "hand wash",
        ),
        (
            _t(
                "men's running shoes",
                "Running Shoes",
                ("Men", "Shoes", "Athletic", "Running"),
                [("color", "colors"), ("size", "shoes")],
                ("non slip", "rubber sole", "lace up", "breathable mesh"),
                (30, 140),
                ("Men's",),
            ),
            _t(
                "women's sneakers",
                "Sneakers",
                ("Women", "Shoes", "Fashion Sneakers"),
                [("color", "colors"), ("size", "shoes")],
                ("non slip", "rubber sole", "memory foam", "arch support"),
                (25, 120),
                ("Women's",),
            ),
            _t(
                "men's t-shirt",
                "T-Shirt",
                ("Men", "Clothing", "Shirts", "T-Shirts"),
                [("color", "colors"), ("size", "apparel")],
                ("crew neck", "moisture wicking", "soft fabric"),
                (8, 35),
                ("Men's",),
            ),
            _t(
                "women's dress",
                "Dress",
                ("Women", "Clothing", "Dresses", "Casual"),
                [("color", "colors"), ("size", "apparel")],
                ("v neck", "high waist", "summer dress", "flowy fit"),
                (18, 80),
                ("Women's",),
            ),
            _t(
                "men's jeans",
                "Jeans",
                ("Men", "Clothing", "Jeans"),
                [("color", "colors"), ("size", "apparel")],
                ("slim fit", "stretch denim", "straight leg", "zipper fly"),
                (20, 90),
                ("Men's",),
            ),
            _t(
                "women's hoodie",
                "Hoodie Sweatshirt",
                ("Women", "Clothing", "Fashion Hoodies & Sweatshirts"),
                [("color", "colors"), ("size", "apparel")],
                ("drawstring hood", "kangaroo pocket", "fleece lined"),
                (18, 60),
                ("Women's",),
            ),
            _t(
                "rain jacket",
                "Rain Jacket",
                ("Women", "Clothing", "Coats, Jackets & Vests", "Rain Jackets"),
                [("color", "colors"), ("size", "apparel")],
                ("water resistant", "packable hood", "zip pockets"),
                (25, 110),
            ),
            _t(
                "athletic socks",
                "Athletic Socks",
                ("Men", "Clothing", "Socks", "Athletic Socks"),
                [("color", "colors"), ("item package quantity", "packs")],
                ("cushioned sole", "moisture wicking", "arch support"),
                (8, 30),
            ),
        ),
    ),
    Category(
        "furniture",
        "Home & Kitchen",
        (
            "easy assemble",
            "living room",
            "easy clean",
            "space saving",
            "storage space",
            "solid wood",
            "metal frame",
            "dining room",
            "modern style",
            "bedroom furniture",
        ),
        (
            _t(
                "office chair",
                "Office Chair",
                ("Furniture", "Home Office Furniture", "Home Office Chairs", "Desk Chairs"),
                [("color", "colors")],
                ("lumbar support", "adjustable height", "swivel wheels", "high back"),
                (60, 350),
            ),
            _t(
                "bookshelf",
                "Bookshelf",
                ("Furniture", "Living Room Furniture", "Bookcases"),
                [("color", "woods"), ("size", "widths")],
                ("5 tier", "open shelves", "wall anchor"),
                (40, 260),
            ),
            _t(
                "coffee table",
                "Coffee Table",
                ("Furniture", "Living Room Furniture", "Tables", "Coffee Tables"),
                [("color", "woods"), ("size", "widths")],
                ("lift top", "hidden storage", "tempered glass"),
                (50, 300),
            ),
            _t(
                "bed frame",
                "Platform Bed Frame",
                ("Furniture", "Bedroom Furniture", "Beds, Frames & Bases", "Beds"),
                [("color", "woods"), ("size", "beds")],
                ("no box spring needed", "wood slat support", "under bed storage"),
                (90, 600),
            ),
            _t(
                "area rug",
                "Area Rug",
                ("Home Décor Products", "Area Rugs, Runners & Pads", "Area Rugs"),
                [("color", "colors"), ("size", "rugs")],
                ("non shedding", "stain resistant", "low pile"),
                (25, 250),
            ),
            _t(
                "table lamp",
                "Table Lamp",
                ("Lighting & Ceiling Fans", "Lamps & Shades", "Table Lamps"),
                [("color", "colors"), ("item package quantity", "packs")],
                ("usb charging port", "touch control", "linen shade"),
                (18, 90),
            ),
            _t(
                "blackout curtains",
                "Blackout Curtains",
                ("Home Décor Products", "Window Treatments", "Curtains & Drapes"),
                [("color", "colors"), ("size", "widths")],
                ("thermal insulated", "grommet top", "noise reducing"),
                (15, 80),
            ),
            _t(
                "throw pillow covers",
                "Throw Pillow Covers",
                ("Bedding", "Decorative Pillows, Inserts & Covers", "Throw Pillow Covers"),
                [("color", "colors"), ("style", "materials")],
                ("hidden zipper", "double sided", "soft touch"),
                (8, 40),
            ),
        ),
    ),
    Category(
        "electronics",
        "Electronics",
        (
            "easy install",
            "high speed",
            "fast charging",
            "high definition",
            "long battery life",
            "water resistant",
            "noise cancelling",
            "usb port",
            "plug play",
            "wireless bluetooth",
        ),
        (
            _t(
                "wireless earbuds",
                "Wireless Earbuds",
                ("Headphones, Earbuds & Accessories", "Headphones & Earbuds", "Earbud Headphones"),
                [("color", "colors")],
                ("charging case", "touch control", "built in microphone", "deep bass"),
                (15, 150),
            ),
            _t(
                "phone case",
                "Phone Case",
                ("Cell Phones & Accessories", "Cases, Holsters & Sleeves", "Basic Cases"),
                [("color", "colors"), ("style", "phones")],
                ("shockproof", "slim fit", "raised edges", "wireless charging compatible"),
                (6, 35),
            ),
            _t(
                "hdmi cable",
                "HDMI Cable",
                ("Television & Video", "Accessories", "Cables", "HDMI Cables"),
                [("size", "lengths"), ("item package quantity", "packs")],
                ("4k hdr", "braided cord", "gold plated"),
                (5, 30),
            ),
            _t(
                "bluetooth speaker",
                "Bluetooth Speaker",
                (
                    "Portable Audio & Video",
                    "Portable Speakers & Docks",
                    "Portable Bluetooth Speakers",
                ),
                [("color", "colors")],
                ("loud sound", "waterproof ipx7", "stereo pairing"),
                (20, 160),
            ),
            _t(
                "usb c charger",
                "USB C Wall Charger",
                (
                    "Cell Phones & Accessories",
                    "Accessories",
                    "Chargers & Power Adapters",
                    "Wall Chargers",
                ),
                [("color", "colors"), ("item package quantity", "packs")],
                ("gan technology", "foldable plug", "dual port"),
                (10, 50),
            ),
            _t(
                "laptop stand",
                "Laptop Stand",
                ("Computers & Accessories", "Laptop Accessories", "Stands"),
                [("color", "colors")],
                ("aluminum alloy", "adjustable height", "heat dissipation", "foldable design"),
                (15, 70),
            ),
            _t(
                "webcam",
                "Webcam",
                ("Computers & Accessories", "Computer Accessories & Peripherals", "Webcams"),
                [("color", "colors")],
                ("1080p video", "auto focus", "privacy cover", "built in microphone"),
                (20, 120),
            ),
            _t(
                "power bank",
                "Portable Power Bank",
                ("Cell Phones & Accessories", "Accessories", "Portable Power Banks"),
                [("color", "colors"), ("size", "mah")],
                ("led display", "dual output", "compact design"),
                (15, 80),
            ),
        ),
    ),
    Category(
        "sports",
        "Sports & Outdoors",
        (
            "lightweight design",
            "easy carry",
            "non slip",
            "durable material",
            "easy clean",
            "outdoor use",
            "compact design",
            "sweat resistant",
            "heavy duty",
            "easy set up",
        ),
        (
            _t(
                "yoga mat",
                "Yoga Mat",
                ("Sports & Fitness", "Exercise & Fitness", "Yoga", "Yoga Mats"),
                [("color", "colors")],
                ("extra thick", "carrying strap", "eco friendly", "double sided"),
                (15, 90),
            ),
            _t(
                "camping tent",
                "Camping Tent",
                ("Outdoor Recreation", "Camping & Hiking", "Tents & Shelters", "Tents"),
                [("color", "colors"), ("size", "tents")],
                ("waterproof rainfly", "instant setup", "mesh windows"),
                (50, 300),
            ),
            _t(
                "insulated water bottle",
                "Insulated Water Bottle",
                (
                    "Outdoor Recreation",
                    "Camping & Hiking",
                    "Hydration & Filtration",
                    "Water Bottles",
                ),
                [("color", "colors"), ("size", "bottles")],
                ("stainless steel", "leak proof", "bpa free", "keeps cold"),
                (10, 45),
            ),
            _t(
                "adjustable dumbbells",
                "Adjustable Dumbbells",
                (
                    "Sports & Fitness",
                    "Exercise & Fitness",
                    "Strength Training Equipment",
                    "Dumbbells",
                ),
                [("size", "dumbbells")],
                ("quick adjust", "anti roll", "rubber coated"),
                (30, 300),
            ),
            _t(
                "hiking backpack",
                "Hiking Backpack",
                ("Outdoor Recreation", "Camping & Hiking", "Backpacks & Bags", "Hiking Daypacks"),
                [("color", "colors"), ("size", "liters")],
                ("rain cover", "hydration compatible", "padded straps"),
                (25, 140),
            ),
            _t(
                "resistance bands",
                "Resistance Bands Set",
                ("Sports & Fitness", "Exercise & Fitness", "Accessories", "Exercise Bands"),
                [("color", "colors"), ("item package quantity", "packs")],
                ("door anchor", "latex free", "carry bag"),
                (8, 40),
            ),
        ),
    ),
    Category(
        "pets",
        "Pet Supplies",
        (
            "easy clean",
            "machine washable",
            "non toxic",
            "durable material",
            "all breeds",
            "pet safe",
            "non slip",
            "washable cover",
            "indoor use",
            "natural ingredients",
        ),
        (
            _t(
                "dog bed",
                "Dog Bed",
                ("Dogs", "Beds & Furniture", "Beds"),
                [("color", "colors"), ("size", "pet_sizes")],
                ("orthopedic foam", "raised rim", "removable cover"),
                (20, 150),
            ),
            _t(
                "cat litter",
                "Clumping Cat Litter",
                ("Cats", "Litter & Housebreaking", "Litter"),
                [("scent", "scents"), ("size", "weights")],
                ("odor control", "low dust", "clumping clay"),
                (8, 40),
            ),
            _t(
                "dog leash",
                "Dog Leash",
                ("Dogs", "Collars, Harnesses & Leashes", "Leashes"),
                [("color", "colors"), ("size", "lengths")],
                ("reflective stitching", "padded handle", "heavy duty clip"),
                (8, 35),
            ),
            _t(
                "cat scratching post",
                "Cat Scratching Post",
                ("Cats", "Cat Trees, Condos & Scratchers", "Scratching Posts"),
                [("color", "colors")],
                ("sisal rope", "hanging toy", "stable base"),
                (15, 80),
            ),
            _t(
                "dog treats",
                "Dog Treats",
                ("Dogs", "Treats", "Biscuits"),
                [("flavor name", "snacks"), ("size", "weights")],
                ("grain free", "made in usa", "small breed"),
                (6, 35),
            ),
            _t(
                "aquarium filter",
                "Aquarium Filter",
                ("Fish & Aquatic Pets", "Aquarium Pumps & Filters", "Filters"),
                [("size", "bottles")],
                ("quiet operation", "three stage filtration", "adjustable flow"),
                (12, 80),
            ),
        ),
    ),
)

UNSEEN_CATEGORIES = ("sports", "pets")
"""Categories whose goals form the ``unseen`` split (held out of ``train`` and ``seen``)."""

# brand names are built from syllables so 100k products get varied, pronounceable brands
BRAND_HEADS = ("vel", "lum", "ar", "cor", "zen", "kal", "mir", "tor", "sol", "nov", "bri", "dax",
               "ela", "fen", "gro", "hal", "iso", "jun", "kor", "lyn", "mav", "nor", "oro", "pax")  # fmt: skip
BRAND_TAILS = ("ora", "ex", "ina", "ix", "ova", "en", "ari", "os", "ly", "ant", "eon", "ique",
               "ara", "io", "uma", "et", "ino", "ock", "ara", "elle")  # fmt: skip
BRAND_SUFFIXES = ("", "", "", " Home", " Co", " Labs", " Pro", " Goods", " Essentials", " Basics")

TITLE_EXTRAS = (
    "Premium",
    "Classic",
    "Everyday",
    "Deluxe",
    "Ultra",
    "Essential",
    "Signature",
    "Original",
)

INSTRUCTION_TEMPLATES = (
    "i need {query} that is {attrs}",
    "i am looking for {query} that is {attrs}",
    "find me {query}, {attrs}",
    "i want to buy {query} which is {attrs}",
    "i'm looking for {attrs} {query}",
    "can you get me {query} that is {attrs}",
)

REVIEW_TITLES = {
    5: ("Love it!", "Exactly what I wanted", "Five stars", "Great value"),
    4: ("Very good", "Works well", "Happy with it", "Nice quality"),
    3: ("It's okay", "Average", "Does the job", "Mixed feelings"),
    2: ("Disappointed", "Not great", "Expected more"),
    1: ("Do not buy", "Broke quickly", "Waste of money"),
}
REVIEW_BODIES = {
    5: (
        "The {noun} is {attr} just as described. Would buy again.",
        "Really happy with this {noun}; {attr} and well made.",
    ),
    4: (
        "Good {noun} overall. {attr_c} as promised, shipping was slow.",
        "Nice {noun}, {attr}. Minor issues but worth the price.",
    ),
    3: (
        "The {noun} is fine. Not sure it is really {attr}.",
        "Average {noun}. Does what it says, nothing special.",
    ),
    2: (
        "The {noun} arrived damaged and was not {attr}.",
        "Cheap feel. The {noun} did not meet my expectations.",
    ),
    1: ("Stopped working after a week. Not {attr} at all.", "Terrible {noun}. Returned it."),
}
